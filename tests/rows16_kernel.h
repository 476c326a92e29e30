/* rows16_kernel.h — a rows kernel in f32, f16 and bf16 with every row
 * mode, an inout buffer and an out buffer whose copy the body reads (a
 * 16-bit one starts at 0): no "cuda" body, so it runs a thread a row on
 * the GPU. test_cuda checks its GPU bits, test_cuda_launch its launches. */
#ifndef HK_TEST_ROWS16_KERNEL_H
#define HK_TEST_ROWS16_KERNEL_H

static const char rows16_json[] =
    "{\"schema_version\": 1, \"name\": \"rows16\", \"kind\": \"rows\",\n"
    " \"types\": {\"T\": [\"f32\", \"f16\", \"bf16\"]},\n"
    " \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
    "  {\"name\": \"w\", \"type\": \"T\", \"role\": \"in\", \"row\": \"shared\"},\n"
    "  {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"},\n"
    "  {\"name\": \"s\", \"type\": \"T\", \"role\": \"out\", \"row\": \"one\"},\n"
    "  {\"name\": \"tot\", \"type\": \"T\", \"role\": \"inout\"}],\n"
    " \"body\": [\"T a = 0;\",\n"
    "  \"for (size_t c = 0; c < n; ++c) {\",\n"
    "  \"    y[c] = x[c] * w[c] + y[c];\",\n"
    "  \"    a += y[c];\",\n"
    "  \"    tot[c] = tot[c] * 0.5f + x[c];\",\n"
    "  \"}\",\n"
    "  \"s[0] = a;\"],\n"
    " \"targets\": [\"cpu\", \"cuda\"]}\n";

#endif
