import torch
import torch.nn as nn
from torch.distributions import Categorical

OBS_DIM = 6
N_ACTIONS = 3
GAMMA = 0.98


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh())
        self.policy = nn.Linear(hidden, n_actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.policy(h), self.value(h)


def discounted_returns(rewards, gamma):
    returns = torch.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def a2c_loss(model, obs, actions, rewards):
    logits, values = model(obs)
    log_probs = Categorical(logits=logits).log_prob(actions)     # (T,)
    returns = discounted_returns(rewards, GAMMA)                # (T,)
    advantages = returns - values.squeeze(-1)
    policy_loss = -(log_probs * advantages.detach()).mean()
    value_loss = advantages.pow(2).mean()
    return policy_loss + 0.5 * value_loss, advantages


if __name__ == "__main__":
    torch.manual_seed(0)
    T = 20  # one rollout of 20 steps
    model = ActorCritic(OBS_DIM, N_ACTIONS)
    obs = torch.randn(T, OBS_DIM)
    actions = torch.randint(0, N_ACTIONS, (T,))
    rewards = torch.rand(T)
    loss, advantages = a2c_loss(model, obs, actions, rewards)
    loss.backward()
    print("loss", loss.item())
    assert advantages.shape == (T,), f"advantages has shape {tuple(advantages.shape)}"
