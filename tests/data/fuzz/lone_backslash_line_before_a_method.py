import torch
class A:
    def f(self):
        pass
\
    def g(self, x):
        y = 1

        return torch.Tensor(3)
