import torch
def f():
    h = \
𐒹""
