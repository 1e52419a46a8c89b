"""vizlib: see what PyTorch's autograd does.

    import vizlib as vz
    g = vz.graph(fn, x, w, b)     # run fn, record forward values, gradients, backward order
    g                             # in Jupyter: the picture; hover a node for its details
    vz.explore(fn, x=2.0, w=3.0)  # sliders: move an input, watch values and gradients change
    vz.replay(g)                  # press Play: backward, one node at a time
    vz.grad_flow(model)           # which layers get (almost) no gradient
    vz.tensor_layout(t, t.T)      # storage, shape, strides, and the views that share it
    vz.float_bits(0.1)            # sign, exponent and mantissa bits in fp32, fp16 and bf16

These names are the whole public API (see the course's VIZLIB design notes). The stages
behind them live in subpackages, data flowing one way:
capture/ (torch -> Graph), transform.py (Graph -> Graph), render/ (Graph -> DOT -> SVG),
views/ (live widgets) and plots/ (matplotlib figures).
"""

from .capture import graph
from .data import Graph, Node, SavedTensor
from .errors import VizlibError
from .plots import GradFlowMonitor, float_bits, grad_flow, tensor_layout
from .views import explore, replay

__all__ = [
    "graph",
    "Graph",
    "Node",
    "SavedTensor",
    "VizlibError",
    "explore",
    "replay",
    "grad_flow",
    "GradFlowMonitor",
    "tensor_layout",
    "float_bits",
]
