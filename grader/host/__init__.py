"""The grader command on the instructor's machine (``python -m grader``), outside any
sandbox: release.py writes exercises/ from solutions/; grade.py gives the tour of grading
(assemble a grading notebook, run it in a sandbox through the plugin, read the records back
as verdicts); roster.py to lms.py turn results into feedback, reports and gradebooks.
"""

import sys

# nbformat imports jsonschema, which imports rfc3987_syntax where it is installed (Jupyter's
# event schemas ask for it): that package builds an Earley grammar at import, about 1.4 s of
# every process start, to check IRIs, which no notebook holds. Marked missing, jsonschema skips
# it. Every host process imports this package before nbformat (the nbval run: run.PYTEST).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "import" fails
