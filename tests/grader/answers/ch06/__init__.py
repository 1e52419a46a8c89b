"""Other answers to the exercises of solutions/06_compile.ipynb (see answers/__init__.py).

One module per task (task_6_1.py for exercise 6.1; task_6_1_more.py, task_6_3_more.py and
task_6_6_more.py hold further wrong answers to 6.1, 6.3 and 6.6), and shared.py what several
tasks use. TASKS keeps the order of the tasks, and each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_6_1, task_6_2, task_6_3, task_6_4, task_6_5, task_6_6

TASKS: dict[str, Task] = {
    "6.1": task_6_1.TASK,
    "6.2": task_6_2.TASK,
    "6.3": task_6_3.TASK,
    "6.4": task_6_4.TASK,
    "6.5": task_6_5.TASK,
    "6.6": task_6_6.TASK,
}
