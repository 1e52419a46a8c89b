"""Other answers to the exercises of solutions/05c_memory_at_scale.ipynb (see answers/__init__.py).

One module per task (task_5_8.py for exercise 5.8). TASKS keeps the order of the tasks, and
each task's wrong answers keep theirs.
"""

from .. import Task
from . import task_5_8, task_5_10

TASKS: dict[str, Task] = {
    "5.8": task_5_8.TASK,
    "5.10": task_5_10.TASK,
}
