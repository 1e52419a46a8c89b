"""The grader command on the instructor's machine (``python -m grader``), outside any
sandbox: release.py writes exercises/ from solutions/; grade.py gives the tour of grading
(assemble a grading notebook, run it in a sandbox through the plugin, read the records back
as verdicts); roster.py to lms.py turn results into feedback, reports and gradebooks.
"""
