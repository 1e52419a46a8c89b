"""matplotlib pictures of what a Graph does not show: gradient flow through a model
(``grad_flow``, ``GradFlowMonitor``) and how a tensor maps onto its storage
(``tensor_layout``)."""

from .grad_flow import GradFlowMonitor, grad_flow
from .tensor_layout import tensor_layout

__all__ = ["GradFlowMonitor", "grad_flow", "tensor_layout"]
