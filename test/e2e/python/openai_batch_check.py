"""Runs a batch with the official Python `openai` SDK against a running Switchyard and prints one JSON object.

Called by test/e2e/batches.python-sdk.test.ts with SWITCHYARD_BASE_URL, SWITCHYARD_API_KEY and CHAT_MODEL set:
files.create (purpose batch), batches.create, batches.retrieve (polled), batches.list, files.content, and a second
batch cancelled. The Jest test asserts on what it prints, so this script only observes.
"""
import io
import json
import os
import time

from openai import OpenAI

client = OpenAI(base_url=os.environ["SWITCHYARD_BASE_URL"], api_key=os.environ["SWITCHYARD_API_KEY"], max_retries=0)
model = os.environ["CHAT_MODEL"]


def jsonl(n, prefix):
    lines = [
        {"custom_id": f"{prefix}-{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": model, "messages": [{"role": "user", "content": f"python line {i}"}], "max_tokens": 16}}
        for i in range(n)
    ]
    return ("\n".join(json.dumps(l) for l in lines) + "\n").encode()


def wait(batch_id, done):
    for _ in range(600):
        b = client.batches.retrieve(batch_id)
        if done(b):
            return b
        time.sleep(0.05)
    raise SystemExit(f"batch {batch_id} did not finish: {b.status}")


ended = lambda b: b.status in ("completed", "failed", "expired", "cancelled")
out = {}

f = client.files.create(file=("input.jsonl", io.BytesIO(jsonl(5, "py"))), purpose="batch")
out["file"] = {"id": f.id, "object": f.object, "purpose": f.purpose, "bytes": f.bytes, "filename": f.filename}
b = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"from": "python"})
out["created"] = {"id": b.id, "status": b.status, "metadata": b.metadata}
b = wait(b.id, ended)
content = client.files.content(b.output_file_id).text
out["batch"] = {
    "status": b.status,
    "request_counts": b.request_counts.model_dump(),
    "cost_rub": (b.usage.model_dump() if b.usage else {}).get("cost_rub"),
    "output_file_id": b.output_file_id,
    "error_file_id": b.error_file_id,
    "lines": [json.loads(l) for l in content.splitlines() if l],
}
out["listed"] = [x.id for x in client.batches.list(limit=10).data]

slow = client.files.create(file=("slow.jsonl", io.BytesIO(jsonl(100, "slow"))), purpose="batch")
c = client.batches.create(input_file_id=slow.id, endpoint="/v1/chat/completions", completion_window="24h")
wait(c.id, lambda x: x.status == "in_progress")
cancelling = client.batches.cancel(c.id)
c = wait(c.id, ended)
out["cancelled"] = {"id": c.id, "first_status": cancelling.status, "status": c.status, "request_counts": c.request_counts.model_dump()}
print(json.dumps(out))
