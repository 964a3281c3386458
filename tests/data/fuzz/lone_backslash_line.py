import torch
if x:
    y = 1
\
pass
t = torch.Tensor(3)
u = torch.Tensor(4)
