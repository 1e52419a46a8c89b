"""Live views in Jupyter: ``explore`` (sliders over a function's inputs) and ``replay``
(backward, one node at a time), sharing the widget helpers in ``widgets``."""

from .explore import explore
from .replay import replay

__all__ = ["explore", "replay"]
