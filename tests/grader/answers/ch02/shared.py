"""What several tasks of solutions/02_autograd.ipynb use: right cells their wrong answers change, setups, helpers."""

# Work run in a thread started by _thread's own starter, taken from the grader's start hook
# (its closure): the thread runs where no record reaches and ends before the cell does.
IN_AN_UNWATCHED_THREAD = """\
import _thread

_start = _thread.start_new_thread.__closure__[0].cell_contents


def in_a_thread(fn):
    done, box = _thread.allocate_lock(), []
    done.acquire()

    def work():
        try:
            box.append(fn())
        finally:
            done.release()

    _start(work, ())
    done.acquire()
    return box[0]


"""
