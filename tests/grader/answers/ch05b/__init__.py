"""Other answers to the exercises of solutions/05b_distributed_at_scale.ipynb (see answers/__init__.py).

One module per task (task_5_7.py for exercise 5.7; task_5_7_more.py holds further wrong
answers to 5.7). TASKS keeps the order of the tasks, and
each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_5_7, task_5_9, task_5_11

TASKS: dict[str, Task] = {
    "5.7": task_5_7.TASK,
    "5.9": task_5_9.TASK,
    "5.11": task_5_11.TASK,
}
