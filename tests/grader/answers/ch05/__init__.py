"""Other answers to the exercises of solutions/05_distributed.ipynb (see answers/__init__.py).

One module per task (task_5_1.py for exercise 5.1; task_5_3_more.py holds further wrong answers
to 5.3). TASKS keeps the order of the tasks, and each task's wrong answers keep theirs.

Wrong answers include a deadlock (5.3: both ranks receive first): its check ends it with
run_ranks' own time limit, kills its processes and fails the task with a message that
names the deadlock, while the grading of the other tasks goes on.
"""

from .. import Task
from . import task_5_1, task_5_2, task_5_3, task_5_4, task_5_5, task_5_6

TASKS: dict[str, Task] = {
    "5.1": task_5_1.TASK,
    "5.2": task_5_2.TASK,
    "5.3": task_5_3.TASK,
    "5.4": task_5_4.TASK,
    "5.5": task_5_5.TASK,
    "5.6": task_5_6.TASK,
}
