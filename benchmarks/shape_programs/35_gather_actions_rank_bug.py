import random
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F

STATE_DIM = 4
N_ACTIONS = 2
GAMMA = 0.99


class QNetwork(nn.Module):
    def __init__(self, state_dim, n_actions, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(state_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_actions)
        )

    def forward(self, s):
        return self.net(s)


class ReplayBuffer:
    def __init__(self, capacity):
        self.buf = deque(maxlen=capacity)

    def push(self, s, a, r, s2, done):
        self.buf.append((s, a, r, s2, done))

    def sample(self, batch_size):
        s, a, r, s2, d = zip(*random.sample(self.buf, batch_size))
        return (torch.stack(s), torch.tensor(a), torch.tensor(r),
                torch.stack(s2), torch.tensor(d, dtype=torch.float32))


def dqn_loss(policy_net, target_net, batch):
    states, actions, rewards, next_states, dones = batch
    q_taken = policy_net(states).gather(1, actions)
    with torch.no_grad():
        next_q = target_net(next_states).max(dim=1).values
        target = rewards + GAMMA * (1 - dones) * next_q
    return F.smooth_l1_loss(q_taken, target)


if __name__ == "__main__":
    random.seed(0)
    torch.manual_seed(0)
    policy_net = QNetwork(STATE_DIM, N_ACTIONS)
    target_net = QNetwork(STATE_DIM, N_ACTIONS)
    target_net.load_state_dict(policy_net.state_dict())
    buffer = ReplayBuffer(1000)
    for _ in range(100):
        buffer.push(torch.randn(STATE_DIM), random.randrange(N_ACTIONS),
                    random.random(), torch.randn(STATE_DIM), random.random() < 0.1)
    opt = torch.optim.Adam(policy_net.parameters(), lr=1e-3)
    loss = dqn_loss(policy_net, target_net, buffer.sample(32))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("td loss", loss.item())
