"""DQN update step on a toy environment with a replay buffer and a target network."""
import random
from collections import deque

import torch
import torch.nn as nn
import torch.nn.functional as F

STATE_DIM = 6
N_ACTIONS = 4
GAMMA = 0.99
BATCH = 32
BUFFER_SIZE = 1000


class QNetwork(nn.Module):
    def __init__(self, state_dim, n_actions):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, 64), nn.ReLU(),
                                 nn.Linear(64, 64), nn.ReLU(),
                                 nn.Linear(64, n_actions))

    def forward(self, s):
        return self.net(s)


def sample(buffer, batch_size):
    batch = random.sample(buffer, batch_size)
    s, a, r, s2, done = zip(*batch)
    return (torch.stack(s), torch.tensor(a), torch.tensor(r),
            torch.stack(s2), torch.tensor(done, dtype=torch.float32))


def dqn_loss(policy, target, batch):
    states, actions, rewards, next_states, dones = batch
    q_values = policy(states)  # (B, N_ACTIONS)
    q_taken = q_values.gather(1, actions.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        next_q = target(next_states).max(dim=1).values
        td_target = rewards + GAMMA * (1.0 - dones) * next_q
    return F.smooth_l1_loss(q_taken, td_target)


if __name__ == "__main__":
    random.seed(0)
    torch.manual_seed(0)
    policy, target = QNetwork(STATE_DIM, N_ACTIONS), QNetwork(STATE_DIM, N_ACTIONS)
    target.load_state_dict(policy.state_dict())
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    buffer = deque(maxlen=BUFFER_SIZE)
    for _ in range(200):
        s = torch.randn(STATE_DIM)
        a = random.randrange(N_ACTIONS)
        buffer.append((s, a, random.random(), torch.randn(STATE_DIM), random.random() < 0.05))
    for step in range(3):
        loss = dqn_loss(policy, target, sample(buffer, BATCH))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step", step, "td loss", loss.item())
