"""Capture: turn a tensor, a function call or a module call into GraphData.

The only stage that touches autograd: ``walk`` reads the graph behind tensors,
``record`` watches a call's forward ops and backward nodes, ``summary`` reduces tensors
to plain numbers at once, and ``build`` puts these together in ``capture``.
"""

from .build import capture

__all__ = ["capture"]
