"""One advantage actor-critic update on a synthetic rollout with discounted returns."""
import torch
import torch.nn as nn
import torch.nn.functional as F

OBS_DIM = 8
N_ACTIONS = 3
ROLLOUT = 16
GAMMA = 0.95


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS_DIM, 64), nn.Tanh())
        self.pi = nn.Linear(64, N_ACTIONS)
        self.v = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h)


def discounted_returns(rewards, dones, gamma):
    returns = torch.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running * (1.0 - dones[t])
        returns[t] = running
    return returns


def update(model, opt, obs, actions, rewards, dones):
    logits, values = model(obs)
    dist = torch.distributions.Categorical(logits=logits)
    log_probs = dist.log_prob(actions)  # (T,)
    returns = discounted_returns(rewards, dones, GAMMA)  # (T,)
    advantages = returns - values.squeeze(-1)
    policy_loss = -(log_probs * advantages.detach()).mean()
    value_loss = advantages.pow(2).mean()
    loss = policy_loss + 0.5 * value_loss - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return advantages.detach(), loss.item()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ActorCritic()
    opt = torch.optim.Adam(model.parameters(), lr=7e-4)
    obs = torch.randn(ROLLOUT, OBS_DIM)
    actions = torch.randint(0, N_ACTIONS, (ROLLOUT,))
    rewards = torch.randn(ROLLOUT)
    dones = (torch.rand(ROLLOUT) < 0.1).float()
    adv, loss = update(model, opt, obs, actions, rewards, dones)
    print("loss", loss, "mean advantage", adv.mean().item())
    assert adv.shape == (ROLLOUT,), adv.shape
