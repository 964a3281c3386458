"""Which classes of a file are `nn.Module` subclasses.

A class is a Module when a base resolves through the imports to a module class of `torch.nn`
(or Lightning's `LightningModule`), or is itself a Module class of this file or, through the
project index, of another file of the project. A class whose bases are imported from outside the
project (unknowable statically) counts as a Module when it defines `forward`; one whose project
bases are known not to be Modules (`class ToSLIC(BaseTransform)`) does not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.imports import ImportTable
from torchlint.analysis.names import dotted_name, method_named, nested_statement_lists, suite_statements

if TYPE_CHECKING:
    from torchlint.analysis.project_facts import ProjectFacts

_NOT_MODULES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
_MODULE_BASES = frozenset(
    {"lightning.LightningModule", "pytorch_lightning.LightningModule", "lightning.pytorch.LightningModule",
     "pytorch_lightning.core.LightningModule", "lightning.pytorch.core.LightningModule"}
)


# The last word of a name that holds a module (`model`, `self.text_encoder`, `layer`, `netD`).
_MODULE_WORD = re.compile(
    r"(?:^|_)(model|module|net|network|layer|block|encoder|decoder|backbone|head|classifier|stem|neck"
    r"|generator|discriminator|critic|unet|vae|autoencoder|mlp|cnn|rnn|lstm|gru)$"
    r"|^net[A-Z]\w*$"
)
# The last word of a container of modules (`self.layers[i]`, `self.downsample_modules[0]`).
_MODULES_WORD = re.compile(r"(?:^|_)(models|modules|layers|blocks|heads|stages|encoders|decoders)$")


def last_word(expr: cst.BaseExpression) -> str | None:
    """`encoder` for `self.text.encoder`, `model` for `model`."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def named_like_module(expr: cst.BaseExpression) -> bool:
    """`model`, `self.backbone`, `netD`, `self.layers[i]`: a name people give to a module."""
    if isinstance(expr, cst.Subscript):
        return named_like_modules(expr.value)
    word = last_word(expr)
    return word is not None and _MODULE_WORD.search(word) is not None


def module_word(name: str) -> str | None:
    """The word that makes a name a module's: `net` of `netD`, `multi_net` and `NeuralNet`,
    `encoder` of `TextEncoder`; None for other names."""
    found = _MODULE_WORD.search(name)
    if found is None:
        found = _MODULE_WORD.search(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower())
    return None if found is None else found.group(1) or "net"


def named_like_modules(expr: cst.BaseExpression) -> bool:
    """`self.layers`, `blocks`: a name people give to a container of modules."""
    word = last_word(expr)
    return word is not None and _MODULES_WORD.search(word) is not None


# Functions of model libraries that build a model: `torchvision.models.resnet18()`,
# `timm.create_model(...)`, `torch.hub.load(...)`, `AutoModel.from_pretrained(...)`.
_MODEL_FACTORY = re.compile(
    r"torchvision\.models\.(\w+\.)*[a-z]\w*|timm\.create_model|timm\.models\.(\w+\.)*create_model|torch\.hub\.load"
    r"|(transformers|diffusers)\.\w*(Model|For)\w*\.from_pretrained|open_clip\.create_model\w*"
)


# torchvision.models helpers that return weights, names or builders, not a model.
_NOT_MODEL_FACTORY = re.compile(r"(get_(?!model$)|list_)\w*")


def is_model_factory(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return _MODEL_FACTORY.fullmatch(qualified) is not None and _NOT_MODEL_FACTORY.fullmatch(last) is None


def is_torch_module_class(qualified: str) -> bool:
    if qualified in _NOT_MODULES:
        return False
    if qualified in _MODULE_BASES:
        return True
    last = qualified.rsplit(".", 1)[-1]
    return qualified.startswith("torch.nn.") and last[:1].isupper() and ".functional." not in qualified


def _class_definitions(statements) -> list[cst.ClassDef]:
    found = []
    for statement in statements:
        if isinstance(statement, cst.ClassDef):
            found.append(statement)
            found.extend(_class_definitions(suite_statements(statement.body)))
        elif isinstance(statement, (cst.If, cst.Try)):
            for nested in nested_statement_lists(statement):
                found.extend(_class_definitions(nested))
    return found


class ModuleClasses:
    """Answers `is_module(classdef)` for the classes of one file."""

    def __init__(self, module: cst.Module, imports: ImportTable, project: ProjectFacts | None = None) -> None:
        self._module = module
        self._imports = imports
        self._project = project
        self._verdicts: dict[int, bool] | None = None

    def is_module(self, classdef: cst.ClassDef) -> bool:
        if self._verdicts is None:
            self._verdicts = self._classify()
        return self._verdicts.get(id(classdef), False)

    def is_module_name(self, name: str) -> bool:
        """A class of this file, by name, that is a Module (for `Net()` constructor calls)."""
        if self._verdicts is None:
            self._verdicts = self._classify()
        return name in self._module_names

    def names(self) -> list[str]:
        """The names of the file's Module classes."""
        if self._verdicts is None:
            self._verdicts = self._classify()
        return list(self._module_names)

    def class_named(self, name: str) -> cst.ClassDef | None:
        """The Module class of this file called `name` (the first one, if several)."""
        if self._verdicts is None:
            self._verdicts = self._classify()
        return self._module_names.get(name)

    def _classify(self) -> dict[int, bool]:
        verdicts: dict[int, bool] = {}
        self._module_names: dict[str, cst.ClassDef] = {}
        for classdef in _class_definitions(self._module.body):
            verdict = self._classify_one(classdef)
            verdicts[id(classdef)] = verdict
            if verdict:
                self._module_names.setdefault(classdef.name.value, classdef)
        return verdicts

    def _classify_one(self, classdef: cst.ClassDef) -> bool:
        has_unknown_base = False
        for base in classdef.bases:
            if base.keyword is not None:
                continue
            qualified = self._imports.qualified_name(base.value)
            if qualified is not None:
                if is_torch_module_class(qualified):
                    return True
                fact = self._project.lookup(qualified) if self._project is not None else None
                if fact is not None and fact.kind == "module class":
                    return True
                # A class the project defines and knows is no Module (`BaseTransform(ABC)`) is no
                # unknowable base: its `forward` does not make a Module.
                known = fact is not None or qualified.startswith(("torch.", "typing."))
                has_unknown_base = has_unknown_base or not known
                continue
            written = dotted_name(base.value)
            if written in self._module_names:
                return True
            has_unknown_base = has_unknown_base or written not in (None, "object")
        return has_unknown_base and method_named(classdef, "forward") is not None

