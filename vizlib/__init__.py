"""vizlib: see what PyTorch's autograd does.

    import vizlib as vz
    g = vz.graph(fn, x, w, b)     # run fn, record forward values, gradients, backward order
    g                             # in Jupyter: the picture; hover a node for its details
    vz.explore(fn, x=2.0, w=3.0)  # sliders: move an input, watch values and gradients change
    vz.replay(g)                  # press Play: backward, one node at a time
    vz.grad_flow(model)           # which layers get (almost) no gradient
    vz.tensor_layout(t, t.T)      # storage, shape, strides, and the views that share it
    vz.float_bits(0.1)            # sign, exponent and mantissa bits in fp32, fp16 and bf16
    vz.timeline(lanes)            # (start, end, label) intervals per lane: what ran when, what overlapped
    vz.graph(gm) / vz.graph(ep)   # an FX GraphModule or a torch.export ExportedProgram, drawn alike
    vz.compiled_graphs(fn, x)     # what torch.compile captured: one Graph per piece between graph breaks
    vz.joint_graph(fn, x, w)      # AOTAutograd's forward and backward graphs, and what the forward saves
    vz.renderer()                 # which Graphviz draws: "dot", "graphviz-pure", "pygraphviz", "browser"

These names are the whole public API (the repository's docs/ARCHITECTURE.md maps the
code). The stages behind them live in subpackages, data flowing one way:
data.py (the plain GraphData, the lowest stage), capture/ (torch -> GraphData),
transform.py (GraphData -> GraphData), render/ (GraphData -> DOT -> SVG), api.py
(vz.graph and vz.Graph: the stages in order), views/ (live widgets) and plots/
(matplotlib figures).
"""

from .api import Graph, compiled_graphs, graph, joint_graph
from .data import Node, SavedTensor
from .errors import VizlibError
from .plots import GradFlowMonitor, float_bits, grad_flow, tensor_layout, timeline
from .render import renderer
from .views import explore, replay

__all__ = [
    "graph",
    "Graph",
    "compiled_graphs",
    "joint_graph",
    "Node",
    "SavedTensor",
    "VizlibError",
    "explore",
    "replay",
    "grad_flow",
    "GradFlowMonitor",
    "tensor_layout",
    "float_bits",
    "timeline",
    "renderer",
]
