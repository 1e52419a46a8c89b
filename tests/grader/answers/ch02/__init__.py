"""Other answers to the exercises of solutions/02_autograd.ipynb (see answers/__init__.py).

One module per task (task_2_1.py for exercise 2.1; task_2_10_more.py holds further wrong
answers to 2.10), and shared.py what several tasks use. TASKS keeps the order of the tasks, and
each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_2_1, task_2_2, task_2_3, task_2_4, task_2_5, task_2_6, task_2_7, task_2_8, task_2_9, task_2_10

TASKS: dict[str, Task] = {
    "2.1": task_2_1.TASK,
    "2.2": task_2_2.TASK,
    "2.3": task_2_3.TASK,
    "2.4": task_2_4.TASK,
    "2.5": task_2_5.TASK,
    "2.6": task_2_6.TASK,
    "2.7": task_2_7.TASK,
    "2.8": task_2_8.TASK,
    "2.9": task_2_9.TASK,
    "2.10": task_2_10.TASK,
}
