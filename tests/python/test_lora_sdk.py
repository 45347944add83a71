"""LoRA adapters through the official openai SDK (server/tests/openai_sdk.rs starts the server):

    pagoda-server --model models/SmolLM2-135M-Instruct.Q4_1.gguf --served-model-name smollm2 \
        --api-key sdk-test-key --enable-lora --max-loras 2 --allow-runtime-lora-updating \
        --lora-modules sql=/tmp/sql '{"name": "chat", "path": "/tmp/chat", ...}' --port 8000 &
    PAGODA_BASE_URL=http://127.0.0.1:8000/v1 PAGODA_LATE_ADAPTER=/tmp/late \
        python3 tests/python/test_lora_sdk.py -v

Adapters are written by scripts/make-lora-adapter.py (random weights, PEFT's layout).
"""

import json
import os
import unittest
import urllib.request

import openai

BASE_URL = os.environ.get("PAGODA_BASE_URL", "http://127.0.0.1:8000/v1")
API_KEY = os.environ.get("PAGODA_API_KEY", "sdk-test-key")
MODEL = os.environ.get("PAGODA_MODEL_NAME", "smollm2")
LATE_ADAPTER = os.environ.get("PAGODA_LATE_ADAPTER", "/tmp/late")
PROMPT = [{"role": "user", "content": "Name three colours."}]


def client():
    return openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=300.0)


def answer(model, stream=False):
    sdk = client()
    if stream:
        chunks = sdk.chat.completions.create(
            model=model, messages=PROMPT, max_tokens=16, temperature=0, stream=True)
        text, models = "", set()
        for chunk in chunks:
            models.add(chunk.model)
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
        return text, models
    response = sdk.chat.completions.create(
        model=model, messages=PROMPT, max_tokens=16, temperature=0)
    return response.choices[0].message.content, {response.model}


def post(path, body):
    request = urllib.request.Request(
        BASE_URL + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class LoraAdapters(unittest.TestCase):
    def test_models_list_shows_adapters_with_their_parent(self):
        models = {m.id: m for m in client().models.list().data}
        self.assertIn(MODEL, models)
        for name in ("sql", "chat"):
            self.assertIn(name, models)
            self.assertEqual(models[name].model_extra["parent"], MODEL)
            self.assertTrue(models[name].model_extra["root"])

    def test_model_selects_the_adapter_streamed_or_not(self):
        base, base_models = answer(MODEL)
        sql, sql_models = answer("sql")
        chat, _ = answer("chat")
        self.assertEqual(base_models, {MODEL})
        self.assertEqual(sql_models, {"sql"})
        self.assertTrue(sql != base or chat != base, "an adapter changes the answer")
        streamed, streamed_models = answer("sql", stream=True)
        self.assertEqual(streamed, sql)
        self.assertEqual(streamed_models, {"sql"})
        completion = client().completions.create(
            model="chat", prompt="Once upon a time", max_tokens=5, temperature=0)
        self.assertEqual(completion.model, "chat")

    def test_unknown_models_are_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            answer("no-such-adapter")
        self.assertEqual(caught.exception.body["code"], "model_not_found")

    def test_adapters_load_and_unload_at_runtime(self):
        status, text = post("/load_lora_adapter", {"lora_name": "late", "lora_path": LATE_ADAPTER})
        self.assertEqual(status, 200, text)
        self.assertIn("late", {m.id for m in client().models.list().data})
        late, models = answer("late")
        self.assertEqual(models, {"late"})
        self.assertTrue(late)
        again = {"lora_name": "late", "lora_path": LATE_ADAPTER}
        status, text = post("/load_lora_adapter", again)
        self.assertEqual(status, 400, text)
        # vLLM's load_inplace: the name takes a fresh load of the directory.
        status, text = post("/load_lora_adapter", {**again, "load_inplace": True})
        self.assertEqual(status, 200, text)
        self.assertEqual(answer("late")[0], late)
        status, text = post("/load_lora_adapter", {"lora_name": " ", "lora_path": LATE_ADAPTER})
        self.assertEqual((status, json.loads(text)["error"]["param"]), (400, "lora_name"), text)
        status, text = post("/unload_lora_adapter", {"lora_name": "late"})
        self.assertEqual(status, 200, text)
        with self.assertRaises(openai.NotFoundError):
            answer("late")
        status, _ = post("/unload_lora_adapter", {"lora_name": "late"})
        self.assertEqual(status, 404)


if __name__ == "__main__":
    unittest.main()
