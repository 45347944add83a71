// llamacpp_logits: dumps llama.cpp's logits for fixed token sequences, teacher-forced.
//
// Part of the reference-fixture pipeline (scripts/reference/README.md). Built against the
// libllama of scripts/reference/build_llamacpp.sh, which compiles it as
// $BUILD/bin/llamacpp_logits.
//
// Usage:
//   llamacpp_logits MODEL.gguf SEQUENCES.txt OUT.bin [N_THREADS]
//
// SEQUENCES.txt: one sequence per line, whitespace-separated integers:
//   N_PROMPT TOK_0 TOK_1 ... TOK_{N-1}
// The first N_PROMPT tokens are the prompt and go through ONE llama_decode (prefill, logits
// requested for every position); each remaining token is then fed in its own llama_decode
// (one decode step with the KV cache), exactly as an engine decodes greedily. Every sequence
// starts from an empty KV cache (llama_memory_clear) at position 0 in sequence 0.
//
// OUT.bin (little-endian): int32 n_sequences, int32 n_vocab, then for each sequence
// int32 n_rows followed by n_rows * n_vocab float32 logits, row r = logits after tokens[0..=r].
//
// Context settings: CPU only (no GPU layers), n_ctx 256, n_batch = n_ubatch = 256 (so a prompt is
// one physical batch), 1 sequence, flash attention off, and an F32 K/V cache (llama.cpp's default
// is F16, which would add ~1e-3 of noise to the comparison with transformers' float32).

#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void quiet_log(enum ggml_log_level level, const char * text, void * /*user*/) {
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
        fputs(text, stderr);
    }
}

static void die(const char * msg) {
    fprintf(stderr, "llamacpp_logits: %s\n", msg);
    exit(1);
}

int main(int argc, char ** argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s MODEL.gguf SEQUENCES.txt OUT.bin [N_THREADS]\n", argv[0]);
        return 2;
    }
    const char * model_path = argv[1];
    const char * seq_path = argv[2];
    const char * out_path = argv[3];
    const int n_threads = argc == 5 ? atoi(argv[4]) : 2;

    // Read the sequences.
    std::vector<int> n_prompt;
    std::vector<std::vector<llama_token>> seqs;
    {
        std::ifstream in(seq_path);
        if (!in) die("cannot open the sequences file");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream ls(line);
            long np;
            if (!(ls >> np)) continue;  // blank line
            std::vector<llama_token> toks;
            long t;
            while (ls >> t) toks.push_back((llama_token) t);
            if (np < 1 || (size_t) np > toks.size()) die("bad N_PROMPT in the sequences file");
            n_prompt.push_back((int) np);
            seqs.push_back(toks);
        }
    }

    llama_log_set(quiet_log, nullptr);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(model_path, mp);
    if (!model) die("failed to load the model");
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_ubatch = 256;
    cp.n_seq_max = 1;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.offload_kqv = false;
    cp.op_offload = false;
    cp.no_perf = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) die("failed to create the context");

    FILE * out = fopen(out_path, "wb");
    if (!out) die("cannot open the output file");
    const int32_t header[2] = {(int32_t) seqs.size(), (int32_t) n_vocab};
    fwrite(header, sizeof(int32_t), 2, out);

    llama_batch batch = llama_batch_init(256, 0, 1);
    for (size_t s = 0; s < seqs.size(); s++) {
        const std::vector<llama_token> & toks = seqs[s];
        if (toks.size() > 256) die("sequence longer than n_ctx");
        llama_memory_clear(llama_get_memory(ctx), true);
        const int32_t n_rows = (int32_t) toks.size();
        fwrite(&n_rows, sizeof(int32_t), 1, out);

        size_t pos = 0;
        while (pos < toks.size()) {
            // The prompt in one decode, then one token per decode.
            const size_t n = pos == 0 ? (size_t) n_prompt[s] : 1;
            batch.n_tokens = (int32_t) n;
            for (size_t i = 0; i < n; i++) {
                batch.token[i] = toks[pos + i];
                batch.pos[i] = (llama_pos) (pos + i);
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = 1;
            }
            if (llama_decode(ctx, batch) != 0) die("llama_decode failed");
            for (size_t i = 0; i < n; i++) {
                const float * row = llama_get_logits_ith(ctx, (int32_t) i);
                if (!row) die("no logits");
                fwrite(row, sizeof(float), (size_t) n_vocab, out);
            }
            pos += n;
        }
    }
    llama_batch_free(batch);
    fclose(out);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
