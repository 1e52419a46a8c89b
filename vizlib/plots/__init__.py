"""matplotlib pictures of what a Graph does not show: gradient flow through a model
(``grad_flow``, ``GradFlowMonitor``), how a tensor maps onto its storage
(``tensor_layout``), the bits a number becomes in each float format (``float_bits``) and
what ran when, and what overlapped (``timeline``). ``style`` holds what every figure shares
(``NOTEBOOK_WIDTH``, ``BIT_COLOURS``), for pictures outside vizlib that should match."""

from .float_bits import float_bits
from .grad_flow import GradFlowMonitor, grad_flow, steps_undone
from .style import BIT_COLOURS, NOTEBOOK_WIDTH
from .tensor_layout import tensor_layout
from .timeline import timeline

__all__ = [
    "GradFlowMonitor",
    "grad_flow",
    "steps_undone",
    "tensor_layout",
    "float_bits",
    "timeline",
    "NOTEBOOK_WIDTH",
    "BIT_COLOURS",
]
