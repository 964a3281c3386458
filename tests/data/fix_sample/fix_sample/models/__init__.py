from fix_sample.models.attention import CrossAttention, MultiHeadAttention, WindowAttention
from fix_sample.models.blocks import ConvBlock, HybridNet, Mlp, ResidualBlock, SqueezeExcite, build_model
from fix_sample.models.heads import AttentionPoolHead, ClassifierHead, MultiLabelHead
from fix_sample.models.norms import LayerNorm2d, RMSNorm, ScaleNorm

__all__ = [
    "AttentionPoolHead",
    "ClassifierHead",
    "ConvBlock",
    "CrossAttention",
    "HybridNet",
    "LayerNorm2d",
    "Mlp",
    "MultiHeadAttention",
    "MultiLabelHead",
    "RMSNorm",
    "ResidualBlock",
    "ScaleNorm",
    "SqueezeExcite",
    "WindowAttention",
    "build_model",
]
