"""The course's autograder: ``python -m grader release`` writes exercises/ from
solutions/, ``python -m grader grade SUBMISSION.ipynb`` grades learners' notebooks with
nbval (see GRADING.md in the design notes and each module's docstring).

Deliberately empty of imports: the grading kernel imports ``grader.output_guard`` and
should not pay for the rest of the package.
"""
