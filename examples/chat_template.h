/* chat_template.h: the prompt of one chat turn (an optional system message, a user message, then
 * the start of the assistant's answer) in the format a GGUF file's tokenizer.chat_template
 * declares, for the common formats only, recognised from marker strings in the template as
 * llama.cpp's llm_chat_detect_template does (no Jinja engine):
 *   chatml      <|im_start|>role\n...<|im_end|>\n            (Qwen, SmolLM, Hermes, ...)
 *   llama3      <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
 *   mistral-v1 / v3 / v3-tekken / v7   [INST] ... [/INST] with each version's spaces
 *   llama2      [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]  (the [INST] templates without a
 *               Mistral version marker)
 *   gemma       <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n
 *   phi3        <|user|>\n...<|end|>\n<|assistant|>\n
 * The result is text with the markers written out; tokenize it with special tokens parsed. */
#ifndef WICK_CHAT_TEMPLATE_H
#define WICK_CHAT_TEMPLATE_H

#include <stddef.h>

typedef enum chat_format {
    CHAT_UNKNOWN = 0,
    CHAT_CHATML,
    CHAT_LLAMA3,
    CHAT_MISTRAL_V1,
    CHAT_MISTRAL_V3,
    CHAT_MISTRAL_V3_TEKKEN,
    CHAT_MISTRAL_V7,
    CHAT_LLAMA2,       /* without a system block */
    CHAT_LLAMA2_SYS,   /* <<SYS>> system block */
    CHAT_LLAMA2_STRIP, /* <<SYS>>, messages trimmed */
    CHAT_GEMMA,
    CHAT_PHI3,
} chat_format;

/* The format of template text tmpl (n bytes); CHAT_UNKNOWN when it is none of the above (*other
 * then names what llama.cpp would call it when it is a format this code knows but does not
 * write, such as "phi4" or "zephyr", else "unrecognised"). */
chat_format chat_detect(const char *tmpl, size_t n, const char **other);
const char *chat_format_name(chat_format f);
/* The prompt (malloc'ed, NUL-terminated; NULL on out of memory): system (may be NULL) and user
 * as one turn, then the assistant's turn opened. */
char *chat_apply(chat_format f, const char *system, const char *user);

#endif
