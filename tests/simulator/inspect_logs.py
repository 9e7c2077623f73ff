"""A small real Inspect AI task, run offline on ``mockllm/model``, for the reader's tests.

One sample, two epochs, run one after the other (``max_samples=1``, so each epoch takes
the next three scripted outputs): the model calls ``read_file`` twice, each call
returning :func:`big_text` (61,600 bytes, kept whole: ``max_tool_output`` is raised above
it), then answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TASK = "read_files"
SAMPLE_ID = "fix-1"
EPOCHS = 2
PATHS = ("a.txt", "b.txt")
ANSWER = "Both files read; nothing to fix."


def big_text(path: str) -> str:
    """What the tool returns for ``path``: 2,200 numbered lines of 28 bytes (61,600 bytes)."""
    return "".join(f"{path:>8} line {i:05d} of 2200\n" for i in range(2200))


def call_id(path: str) -> str:
    """The id of the call reading ``path`` (fixed, so that two runs log the same ids)."""
    return f"call_read_{path}"


def write_log(log_dir: Path, log_format: str) -> Path:
    """Run the task once into ``log_dir`` as ``log_format`` (``"eval"`` or ``"json"``);
    the log's path."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def read_file() -> Any:
        async def execute(path: str) -> str:
            """Read a file of the repository.

            Args:
                path: The file to read.
            """
            return big_text(path)

        return execute

    model = "mockllm/model"
    outputs = [
        *(
            ModelOutput.for_tool_call(model, "read_file", {"path": p}, tool_call_id=call_id(p))
            for p in PATHS
        ),
        ModelOutput.from_content(model, ANSWER),
    ] * EPOCHS
    task = Task(
        dataset=[Sample(id=SAMPLE_ID, input="Read a.txt and b.txt, then say what to fix.")],
        solver=[use_tools(read_file()), generate()],
        name=TASK,
        epochs=EPOCHS,
    )
    [log] = inspect_eval(
        task,
        model=model,
        model_args={"custom_outputs": outputs},
        log_dir=str(log_dir),
        log_format=log_format,
        display="none",
        max_samples=1,
        max_tool_output=1_000_000,
        score=False,
    )
    assert log.status == "success", log.error
    return Path(log.location)
