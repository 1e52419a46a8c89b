"""matplotlib pictures of what a Graph does not show: gradient flow through a model
(``grad_flow``, ``GradFlowMonitor``), how a tensor maps onto its storage
(``tensor_layout``) and the bits a number becomes in each float format (``float_bits``)."""

from .float_bits import float_bits
from .grad_flow import GradFlowMonitor, grad_flow
from .tensor_layout import tensor_layout

__all__ = ["GradFlowMonitor", "grad_flow", "tensor_layout", "float_bits"]
