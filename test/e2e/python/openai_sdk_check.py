"""Runs the official Python `openai` SDK against a running Switchyard and prints one JSON object of findings.

Called by test/e2e/python-sdk.test.ts with SWITCHYARD_BASE_URL, SWITCHYARD_API_KEY, CHAT_MODEL and
EMBEDDING_MODEL set; the Jest test asserts on what it prints, so this script only observes.
"""
import json
import os

import openai
from openai import OpenAI

client = OpenAI(base_url=os.environ["SWITCHYARD_BASE_URL"], api_key=os.environ["SWITCHYARD_API_KEY"], max_retries=0)
chat_model = os.environ["CHAT_MODEL"]
embedding_model = os.environ["EMBEDDING_MODEL"]
out = {"sdk_version": openai.__version__}

c = client.chat.completions.create(model=chat_model, messages=[{"role": "user", "content": "hi"}])
out["chat"] = {
    "content": c.choices[0].message.content,
    "finish_reason": c.choices[0].finish_reason,
    "usage": c.usage.model_dump(),
    "request_id": c._request_id,
}

stream = client.chat.completions.create(
    model=chat_model, messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
)
text, usage, finish = "", None, None
for chunk in stream:
    if chunk.choices:
        text += chunk.choices[0].delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
    if chunk.usage:
        usage = chunk.usage.model_dump()
out["chat_stream"] = {"text": text, "finish_reason": finish, "usage": usage, "request_id": stream.response.headers.get("x-request-id")}

r = client.responses.create(model=chat_model, input="Say hello")
out["responses"] = {"status": r.status, "output_text": r.output_text, "usage": r.usage.model_dump(), "request_id": r._request_id}

events, delta_text = [], ""
with client.responses.stream(model=chat_model, input="Stream please") as rs:
    for event in rs:
        events.append(event.type)
        if event.type == "response.output_text.delta":
            delta_text += event.delta
    final = rs.get_final_response()
out["responses_stream"] = {"first": events[0], "last": events[-1], "text": delta_text, "final_status": final.status}

floats = client.embeddings.create(model=embedding_model, input=["alpha", "beta"], encoding_format="float")
default = client.embeddings.create(model=embedding_model, input=["alpha", "beta"])  # base64 on the wire, decoded
tokens = client.embeddings.create(model=embedding_model, input=[[1, 2, 3], [4, 5]])
out["embeddings"] = {
    "count": len(floats.data),
    "dims": len(floats.data[0].embedding),
    "max_diff_base64": max(abs(a - b) for d, e in zip(floats.data, default.data) for a, b in zip(d.embedding, e.embedding)),
    "token_arrays": {"count": len(tokens.data), "prompt_tokens": tokens.usage.prompt_tokens},
    "request_id": floats._request_id,
}

try:
    client.chat.completions.create(model="nope/unknown", messages=[{"role": "user", "content": "x"}])
    out["error"] = None
except openai.NotFoundError as e:
    body = e.body if isinstance(e.body, dict) else {}
    out["error"] = {"status": e.status_code, "request_id": e.request_id, "code": body.get("code"), "trace_id": body.get("trace_id")}

print(json.dumps(out))
