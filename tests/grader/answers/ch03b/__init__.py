"""Other answers to the exercises of solutions/03b_training.ipynb (see answers/__init__.py).

One module per task (task_3_6.py for exercise 3.6; task_3_6_more.py, task_3_9_more.py and
task_3_10_more.py hold further wrong answers to 3.6, 3.9 and 3.10). TASKS keeps the order of
the tasks, and each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_3_6, task_3_7, task_3_8, task_3_9, task_3_10

TASKS: dict[str, Task] = {
    "3.6": task_3_6.TASK,
    "3.7": task_3_7.TASK,
    "3.8": task_3_8.TASK,
    "3.9": task_3_9.TASK,
    "3.10": task_3_10.TASK,
}
