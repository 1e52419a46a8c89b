"""The exceptions vizlib raises for bad input, following Python's conventions.

Every message says what was wrong and what to do about it, so a learner never has to
read a stack trace from deep inside autograd or Graphviz. An argument of the wrong type
raises ``VizlibTypeError`` (also a ``TypeError``), one of the right type but a wrong
value ``VizlibValueError`` (also a ``ValueError``); a missing or failing Graphviz raises
the base ``VizlibError``. ``except vz.VizlibError`` catches all three. The learner's own
exceptions (raised by their function) are never wrapped: they propagate unchanged.
"""


class VizlibError(Exception):
    """Something vizlib cannot work with, with a message that says how to fix it."""


class VizlibTypeError(VizlibError, TypeError):
    """An argument of the wrong type, e.g. ``vz.graph(42)``."""


class VizlibValueError(VizlibError, ValueError):
    """An argument of the right type with a value vizlib cannot use, e.g. a tensor that
    does not require grad, or a graph whose saved tensors were freed."""


class NotScalarResult(VizlibValueError):
    """A recorded call's result is not one number and no ``grad_output`` was given; each
    entry point says what to do in its own terms (``vz.explore`` takes no grad_output)."""

    def __init__(self, message: str, shapes: list[list[int | str]]):
        super().__init__(message)
        self.shapes = shapes
