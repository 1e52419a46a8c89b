"""The course's autograder: ``python -m grader release`` writes exercises/ from
solutions/, ``python -m grader grade SUBMISSION.ipynb`` grades learners' notebooks with
nbval. How to use it: the README's "For instructors" section; how it is built:
docs/ARCHITECTURE.md and each module's docstring (grade.py gives the tour).

Deliberately empty of imports: the grading kernel imports ``grader.output_guard`` and
should not pay for the rest of the package.
"""
