"""The one error type the grader raises for problems a person can fix."""


class GraderError(Exception):
    """Bad input (a file that is not a notebook, the wrong chapter, a malformed exercise
    notebook): the message says what went wrong and what to do, and the CLI prints it
    instead of a traceback."""
