import torch
import torch.nn as nn
import torch.nn.functional as F

OBS_DIM = 8
N_ACTIONS = 4
GAMMA = 0.99
BATCH_SIZE = 32
CAPACITY = 1000


class ReplayBuffer:
    def __init__(self, capacity, obs_dim):
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.actions = torch.zeros(capacity, dtype=torch.long)
        self.rewards = torch.zeros(capacity, 1)
        self.dones = torch.zeros(capacity, 1)
        self.capacity, self.size, self.ptr = capacity, 0, 0

    def add(self, obs, action, reward, next_obs, done):
        i = self.ptr
        self.obs[i], self.actions[i], self.rewards[i] = obs, action, reward
        self.next_obs[i], self.dones[i] = next_obs, float(done)
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size):
        idx = torch.randint(0, self.size, (batch_size,))
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.dones[idx]


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, obs):
        return self.net(obs)


def td_targets(target_net, rewards, next_obs, dones):
    with torch.no_grad():
        next_q = target_net(next_obs).max(dim=1).values        # (B,)
        return rewards + GAMMA * (1.0 - dones) * next_q


def dqn_update(q_net, target_net, opt, batch):
    obs, actions, rewards, next_obs, dones = batch
    q_sa = q_net(obs).gather(1, actions.unsqueeze(1)).squeeze(1)   # (B,)
    targets = td_targets(target_net, rewards, next_obs, dones)
    loss = F.smooth_l1_loss(q_sa, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item(), targets


if __name__ == "__main__":
    torch.manual_seed(0)
    q_net = QNetwork(OBS_DIM, N_ACTIONS)
    target_net = QNetwork(OBS_DIM, N_ACTIONS)
    target_net.load_state_dict(q_net.state_dict())
    opt = torch.optim.Adam(q_net.parameters(), lr=1e-3)
    buffer = ReplayBuffer(CAPACITY, OBS_DIM)
    obs = torch.randn(OBS_DIM)
    for t in range(200):                                   # random-policy warm-up
        action = torch.randint(0, N_ACTIONS, ()).item()
        next_obs = obs + 0.1 * torch.randn(OBS_DIM)
        reward = float(next_obs[0] > 0)
        done = t % 50 == 49
        buffer.add(obs, action, reward, next_obs, done)
        obs = torch.randn(OBS_DIM) if done else next_obs
    for step in range(5):
        loss, targets = dqn_update(q_net, target_net, opt, buffer.sample(BATCH_SIZE))
    print("loss", loss)
    assert targets.shape == (BATCH_SIZE,), f"TD targets have shape {tuple(targets.shape)}"
