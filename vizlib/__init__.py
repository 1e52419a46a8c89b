"""vizlib: see what PyTorch's autograd does.

    import vizlib as vz
    g = vz.graph(fn, x, w, b)     # run fn, record forward values, gradients, backward order
    g                             # in Jupyter: the picture; hover a node for its details

The names below are the whole public API (see VIZLIB.md).
"""

from .capture import graph
from .errors import VizlibError
from .graph import Graph, Node, SavedTensor

__all__ = ["graph", "Graph", "Node", "SavedTensor", "VizlibError"]

# The live views and plots are optional at import time only while they are being written.
try:
    from .explore import explore
    from .replay import replay
    __all__ += ["explore", "replay"]
except ImportError:
    pass
try:
    from .grad_flow import GradFlowMonitor, grad_flow
    from .tensor_layout import tensor_layout
    __all__ += ["grad_flow", "GradFlowMonitor", "tensor_layout"]
except ImportError:
    pass
