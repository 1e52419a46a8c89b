"""What several tasks of solutions/01_tensors.ipynb use: right cells their wrong answers change, setups, helpers."""

# An answer that "equals" anything: checks that compare with == would let it pass.
EQUALS_ANYTHING = """\
class Anything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


"""
