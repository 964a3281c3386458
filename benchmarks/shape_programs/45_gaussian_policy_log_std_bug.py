from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.distributions import Normal


@dataclass
class EnvSpec:
    obs_dim: int = 11       # e.g. a Hopper-like observation
    act_dim: int = 3
    act_limit: float = 1.0


class GaussianPolicy(nn.Module):
    """Diagonal Gaussian policy with a state-independent, learned log standard deviation."""

    def __init__(self, spec: EnvSpec, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(spec.obs_dim, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
        )
        self.mu = nn.Linear(hidden, spec.act_dim)
        self.log_std = nn.Parameter(-0.5 * torch.ones(spec.obs_dim))

    def distribution(self, obs):
        mu = self.mu(self.net(obs))
        return Normal(mu, self.log_std.exp())

    def forward(self, obs, actions):
        dist = self.distribution(obs)
        return dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)


def fake_rollout(spec, n_steps):
    obs = torch.randn(n_steps, spec.obs_dim)
    actions = torch.clamp(torch.randn(n_steps, spec.act_dim), -spec.act_limit, spec.act_limit)
    rewards = torch.randn(n_steps)
    return obs, actions, rewards


def reward_to_go(rewards, gamma=0.99):
    out = torch.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(rewards.size(0))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def reinforce_update(policy, opt, obs, actions, rewards, ent_coef=0.01):
    returns = reward_to_go(rewards)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    log_probs, entropy = policy(obs, actions)
    loss = -(log_probs * returns).mean() - ent_coef * entropy.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    spec = EnvSpec()
    policy = GaussianPolicy(spec)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    for it in range(3):
        obs, actions, rewards = fake_rollout(spec, n_steps=64)
        print(f"iter {it}: loss {reinforce_update(policy, opt, obs, actions, rewards):.4f}")
