"""The one exception vizlib raises for bad input.

Every message says what was wrong and what to do about it, so a learner never has to
read a stack trace from deep inside autograd or Graphviz. The learner's own exceptions
(raised by their function) are never wrapped: they propagate unchanged.
"""


class VizlibError(ValueError):
    """Bad input to vizlib, with a message that says how to fix it."""
