"""The house style of vizlib's figures, in one place: the widest figure a notebook shows at full
size, and the palette of every picture of a number's bits.

Exported by ``vizlib.plots``, so that a chapter's own chart (chapter 01's formats) or a
course picture (coursekit's rank and DDP plots) matches vizlib's figures.
"""

# Widest figure, in inches: JupyterLab's output area is about 860 px and shows figures at
# matplotlib's 100 dpi, so a wider one is scaled down and its 8 pt labels shrink to ~6 px.
NOTEBOOK_WIDTH = 8.6

# The three fields of a floating-point number, as vz.float_bits colours them.
BIT_COLOURS = {"sign": "#f4a6a6", "exponent": "#a9c8ec", "mantissa": "#b5e0b0"}
