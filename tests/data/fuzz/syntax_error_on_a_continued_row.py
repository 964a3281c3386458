import torch
x = torch.zeros(3) + \
\:
