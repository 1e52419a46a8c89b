"""Other answers to the exercises of solutions/04_amp.ipynb (see answers/__init__.py).

One module per task (task_4_1.py for exercise 4.1), and shared.py what several tasks use. TASKS
keeps the order of the tasks, and each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_4_1, task_4_2, task_4_3, task_4_4, task_4_5, task_4_6, task_4_7

TASKS: dict[str, Task] = {
    "4.1": task_4_1.TASK,
    "4.2": task_4_2.TASK,
    "4.3": task_4_3.TASK,
    "4.4": task_4_4.TASK,
    "4.5": task_4_5.TASK,
    "4.6": task_4_6.TASK,
    "4.7": task_4_7.TASK,
}
