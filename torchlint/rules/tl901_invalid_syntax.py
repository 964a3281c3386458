from torchlint.diagnostics import Severity
from torchlint.rule import Rule


class InvalidSyntax(Rule):
    """
    ## What it does
    Reports a file that Python cannot parse, with the parser's row, column and message.

    ## Why is this bad?
    Nothing else in the file can be checked, and the file will fail when imported.

    ## Example
    ```python
    def train(model:
        ...
    ```

    ## Use instead
    ```python
    def train(model):
        ...
    ```

    This finding cannot be suppressed with `# noqa`.
    """

    code = "TL901"
    name = "invalid-syntax"
    summary = "The file is not valid Python"
    severity = Severity.ERROR
