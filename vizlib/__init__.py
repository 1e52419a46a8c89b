"""vizlib: see what PyTorch's autograd does.

    import vizlib as vz
    g = vz.graph(fn, x, w, b)     # run fn, record forward values, gradients, backward order
    g                             # in Jupyter: the picture; hover a node for its details
    vz.explore(fn, x=2.0, w=3.0)  # sliders: move an input, watch values and gradients change
    vz.replay(g)                  # press Play: backward, one node at a time
    vz.grad_flow(model)           # which layers get (almost) no gradient
    vz.tensor_layout(t, t.T)      # storage, shape, strides, and the views that share it

These names are the whole public API (see the course's VIZLIB design notes).
"""

from .capture import graph
from .errors import VizlibError
from .explore import explore
from .grad_flow import GradFlowMonitor, grad_flow
from .graph import Graph, Node, SavedTensor
from .replay import replay
from .tensor_layout import tensor_layout

__all__ = ["graph", "Graph", "Node", "SavedTensor", "VizlibError", "explore", "replay",
           "grad_flow", "GradFlowMonitor", "tensor_layout"]
