"""Other answers to the exercises of solutions/01_tensors.ipynb (see answers/__init__.py).

One module per task (task_1_1.py for exercise 1.1), and shared.py what several tasks use. TASKS
keeps the order of the tasks, and each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_1_1, task_1_2, task_1_3, task_1_4, task_1_5, task_1_6, task_1_7, task_1_8

TASKS: dict[str, Task] = {
    "1.1": task_1_1.TASK,
    "1.2": task_1_2.TASK,
    "1.3": task_1_3.TASK,
    "1.4": task_1_4.TASK,
    "1.5": task_1_5.TASK,
    "1.6": task_1_6.TASK,
    "1.7": task_1_7.TASK,
    "1.8": task_1_8.TASK,
}
