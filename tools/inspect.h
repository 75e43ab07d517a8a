/* inspect.h: `wick inspect` and `wick gguf` (tools/inspect.c). Each prints the file's contents to
 * stdout and returns the command's exit status (0, or 1 with a message on stderr). */
#ifndef WICK_INSPECT_H
#define WICK_INSPECT_H

int inspect_file(const char *path);        /* GGUF or safetensors, by the first bytes */
int inspect_gguf(const char *path);
int inspect_safetensors(const char *path);

#endif
