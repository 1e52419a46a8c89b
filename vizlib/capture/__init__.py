"""Capture: turn a tensor, a function call or a module call into GraphData.

The only stage that touches autograd: ``walk`` reads the graph behind tensors,
``record`` watches a call's forward ops, ``backward`` its backward nodes, ``summary`` reduces tensors
to a few numbers on their device at once (read together at the end, then made into each
tensor's numbers by ``rows``), ``devices`` says
where tensors live, and ``build`` puts these together in ``capture``. Graphs the
compiler stack holds are read, not recorded: ``fx`` (GraphModule, ExportedProgram),
``compiled`` (the graphs torch.compile captures between graph breaks) and ``joint``
(AOTAutograd's forward and backward graphs).
"""

from .build import capture, collector_paused
from .compiled import compiled_graphs
from .fx import capture_compiler_graph, is_compiler_graph
from .joint import joint_graph
from .summary import Summaries

__all__ = [
    "capture",
    "collector_paused",
    "capture_compiler_graph",
    "compiled_graphs",
    "is_compiler_graph",
    "joint_graph",
    "Summaries",
]
