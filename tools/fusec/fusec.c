/* fusec: the kfuse command line.  One table of subcommands; each takes its
 * own arguments and returns the exit status: 0 success, 1 user error (a bad
 * file, a parse error; message on stderr), 2 usage error. */
#include "kfuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_USER = 1, EXIT_USAGE = 2 };

typedef struct fusec_cmd {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the command name */
    const char *usage;                   /* arguments, after "fusec NAME" */
    const char *help;                    /* one line */
} fusec_cmd;

static int cmd_check(int argc, char **argv);
static int cmd_dump(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const fusec_cmd commands[] = {
    { "check", cmd_check, "FILE...", "parse and verify each file" },
    { "dump", cmd_dump, "FILE [--graph NAME]", "print the module (or one graph) as parsed and verified" },
    { "help", cmd_help, "[COMMAND]", "show this help, or one command's" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const fusec_cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fusec COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  fusec %s %-28s %s\n", commands[i].name, commands[i].usage, commands[i].help);
    fprintf(f, "\n'fusec COMMAND --help' shows one command.  Exit status: 0 success, 1 error, 2 usage.\n");
}

static void cmd_usage(FILE *f, const fusec_cmd *c)
{
    fprintf(f, "usage: fusec %s %s\n  %s\n", c->name, c->usage, c->help);
}

/* A usage error for command c: message, the command's usage, status 2. */
static int usage_error(const fusec_cmd *c, const char *fmt, const char *arg)
{
    fputs("fusec: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    if (c)
        cmd_usage(stderr, c);
    else
        usage(stderr);
    return EXIT_USAGE;
}

/* Parse one file; on error print the module's message and return NULL. */
static kf_module *load(const char *path)
{
    kf_module *m = NULL;
    kf_status s = kf_module_parse_file(path, NULL, &m);
    if (s != KF_OK) {
        fprintf(stderr, "%s\n", m ? kf_module_error(m) : "fusec: out of memory");
        kf_module_free(m);
        return NULL;
    }
    return m;
}

static int cmd_check(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("check");
    int nfiles = 0, rc = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] != 0)
            return usage_error(c, "unknown option '%s'", argv[i]);
    for (int i = 1; i < argc; i++) {
        nfiles++;
        kf_module *m = load(argv[i]);
        if (!m) {
            rc = EXIT_USER;
            continue;
        }
        int n = kf_module_num_graphs(m);
        printf("%s: ok (%d graph%s)\n", argv[i], n, n == 1 ? "" : "s");
        kf_module_free(m);
    }
    if (nfiles == 0)
        return usage_error(c, "%s", "missing FILE");
    return rc;
}

static int cmd_dump(int argc, char **argv)
{
    const fusec_cmd *c = find_cmd("dump");
    const char *file = NULL, *graph = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--graph") == 0) {
            if (i + 1 >= argc)
                return usage_error(c, "%s", "--graph needs a NAME");
            graph = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            return usage_error(c, "unknown option '%s'", argv[i]);
        } else if (file) {
            return usage_error(c, "unexpected argument '%s' (one FILE)", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file)
        return usage_error(c, "%s", "missing FILE");
    kf_module *m = load(file);
    if (!m)
        return EXIT_USER;
    kf_status s;
    if (graph) {
        kf_graph *g = kf_module_find(m, graph);
        if (!g) {
            fprintf(stderr, "fusec: %s: no graph '%s'\n", file, graph);
            kf_module_free(m);
            return EXIT_USER;
        }
        s = kf_graph_print(g, stdout);
    } else {
        s = kf_module_print(m, stdout);
    }
    kf_module_free(m);
    if (s != KF_OK || fflush(stdout) != 0) {
        fprintf(stderr, "fusec: cannot print: %s\n", kf_status_string(s != KF_OK ? s : KF_ERR_IO));
        return EXIT_USER;
    }
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    const fusec_cmd *c = find_cmd(argv[1]);
    if (!c)
        return usage_error(NULL, "unknown command '%s'", argv[1]);
    cmd_usage(stdout, c);
    return 0;
}

static bool wants_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (wants_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    const fusec_cmd *c = find_cmd(argv[1]);
    if (!c)
        return usage_error(NULL, "unknown command '%s'", argv[1]);
    for (int i = 2; i < argc; i++)
        if (wants_help(argv[i])) {
            cmd_usage(stdout, c);
            return 0;
        }
    return c->run(argc - 1, argv + 1);
}
