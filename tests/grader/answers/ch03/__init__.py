"""Other answers to the exercises of solutions/03_modules.ipynb (see answers/__init__.py).

One module per task (task_3_1.py for exercise 3.1; task_3_3_more.py and task_3_5_more.py hold
further wrong answers to 3.3 and 3.5), and shared.py what several tasks use. TASKS keeps the
order of the tasks, and each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_3_1, task_3_2, task_3_3, task_3_4, task_3_5

TASKS: dict[str, Task] = {
    "3.1": task_3_1.TASK,
    "3.2": task_3_2.TASK,
    "3.3": task_3_3.TASK,
    "3.4": task_3_4.TASK,
    "3.5": task_3_5.TASK,
}
