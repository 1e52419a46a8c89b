"""The course's autograder: ``python -m grader release`` writes exercises/ from
solutions/, ``python -m grader grade SUBMISSION.ipynb`` grades learners' notebooks with
nbval. How to use it: the README's "For instructors" section; how it is built:
docs/ARCHITECTURE.md and each module's docstring (host/grade.py gives the tour).

Its code runs in three places, one sub-package each:

- ``host/``: the ``python -m grader`` command, on the instructor's machine;
- ``plugin/``: the pytest process the host starts to run submissions through nbval;
- ``kernel/``: the learner's kernel, inside the sandbox (and in the learner's own Lab).

Deliberately empty of imports: the grading kernel imports ``grader.kernel.output_guard`` and
should not pay for the rest of the package.
"""
