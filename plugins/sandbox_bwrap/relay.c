/* Inside the sandbox: the Trial's PID 1 and its one way out, as a C program.

   It does exactly what relay.py does, in the same order and with the same arguments, reports and
   exit codes (relay.py's docstring is the contract; the each_relay tests hold both to it):

       relay REPORT_FD GO_FD SOCKET PORT KEYCTL -- COMMAND...

   It exists because a Python relay spends about 10 ms of CPU starting for every Trial, most of a
   sandboxed Trial's own cost on the host; this one starts in well under a millisecond. The backend
   builds it once per machine with the C compiler (relays.py) and falls back to relay.py where
   there is none.

   Every descriptor it opens is close-on-exec, so COMMAND holds none of them; it blocks no signal
   and installs no handler (glibc's own for its internal signal 33 ignores any other sender), so as
   PID 1 of its namespace it ignores every signal sent from inside, and COMMAND starts with SIGINT,
   SIGPIPE and SIGXFSZ at their defaults and nothing blocked. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 65536
#define STACK (256 * 1024) /* a pump's stack: its buffer and a little more, not the default 8 MiB */
#define KEYCTL_JOIN_SESSION_KEYRING 1
#define FD_MOST (1 << 20) /* no descriptor or system call number is larger */

extern char **environ;
static const char *upstream_path;

static void say(int fd, const char *line) {
    size_t left = strlen(line);
    while (left > 0) {
        ssize_t n = write(fd, line, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        line += n;
        left -= (size_t)n;
    }
}

/* "assay sandbox: " and the words up to a NULL, whole however long, on stderr; then exit 127. */
static void fail(const char *word, ...) {
    va_list words;
    say(2, "assay sandbox: ");
    va_start(words, word);
    for (; word != NULL; word = va_arg(words, const char *))
        say(2, word);
    va_end(words);
    say(2, "\n");
    _exit(127);
}

static int send_all(int fd, const char *data, size_t left) {
    while (left > 0) {
        ssize_t n = send(fd, data, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        left -= (size_t)n;
    }
    return 0;
}

/* Copy src to dst until end of file (then half-close dst) or an error, the half-close's too (then
   shut both down): relay.py's _pump. */
static void pump(int src, int dst) {
    char buffer[CHUNK];
    for (;;) {
        ssize_t n = recv(src, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && shutdown(dst, SHUT_WR) == 0)
            return;
        if (n <= 0 || send_all(dst, buffer, (size_t)n) < 0) {
            shutdown(src, SHUT_RDWR);
            shutdown(dst, SHUT_RDWR);
            return;
        }
    }
}

struct pair { int src, dst; };

static void *pump_back(void *arg) {
    struct pair *pair = arg;
    pump(pair->src, pair->dst);
    return NULL;
}

static int start_thread(pthread_t *thread, void *(*run)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK);
    int failed = pthread_create(thread, &attr, run, arg);
    pthread_attr_destroy(&attr);
    return failed;
}

/* One connection: to the proxy's Unix socket, a pump each way, then both closed. */
static void *forward(void *arg) {
    int client = (int)(long)arg;
    int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, upstream_path, sizeof address.sun_path - 1);
    if (upstream < 0 || connect(upstream, (struct sockaddr *)&address, sizeof address) < 0) {
        close(client);
        if (upstream >= 0)
            close(upstream);
        return NULL;
    }
    struct pair back = {upstream, client};
    pthread_t thread;
    if (start_thread(&thread, pump_back, &back) != 0) {
        close(client);
        close(upstream);
        return NULL;
    }
    pump(client, upstream);
    pthread_join(thread, NULL);
    close(client);
    close(upstream);
    return NULL;
}

static void *accept_all(void *arg) {
    int listener = (int)(long)arg;
    for (;;) {
        int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) {
            /* Out of descriptors or memory (the Trial's own doing), or a connection's own error
               (accept(2) passes those on): try again soon; the listener stays good. */
            if (errno != EINTR && errno != ECONNABORTED)
                usleep(10000);
            continue;
        }
        pthread_t thread;
        if (start_thread(&thread, forward, (void *)(long)client) != 0)
            close(client);
        else
            pthread_detach(thread);
    }
    return NULL;
}

static int number(const char *text, const char *what, long most) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || end == text || value < 0 || value > most)
        fail("a malformed argument: ", what, NULL);
    return (int)value;
}

int main(int argc, char **argv) {
    int dash = 6;
    signal(SIGPIPE, SIG_IGN); /* as Python's relay has them: a write's error, not a signal */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 8 || strcmp(argv[dash], "--") != 0)
        fail("usage: relay REPORT_FD GO_FD SOCKET PORT KEYCTL -- COMMAND...", NULL);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        fail("can't make the relay undumpable", NULL);
    if (strcmp(argv[5], "-") != 0) {
        long keyctl = number(argv[5], "KEYCTL", FD_MOST);
        /* Each argument a whole long, as the kernel (and the seccomp filter) reads it. */
        if (syscall(keyctl, (long)KEYCTL_JOIN_SESSION_KEYRING, 0L) < 0 && errno != ENOSYS) {
            char detail[32];
            snprintf(detail, sizeof detail, " (errno %d)", errno);
            fail("can't join a fresh session keyring", detail, NULL);
        }
    }
    int report = number(argv[1], "REPORT_FD", FD_MOST), go = number(argv[2], "GO_FD", FD_MOST);
    int port = number(argv[4], "PORT", 65535);
    upstream_path = argv[3];
    char **command = argv + dash + 1;
    if (fcntl(report, F_SETFD, FD_CLOEXEC) < 0 || fcntl(go, F_SETFD, FD_CLOEXEC) < 0)
        fail("a descriptor bwrap should have passed is missing", NULL);

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0
        || bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 128) < 0)
        fail("can't listen for the proxy: ", strerror(errno), NULL);
    pthread_t acceptor;
    if (start_thread(&acceptor, accept_all, (void *)(long)listener) != 0)
        fail("can't start the relay's thread", NULL);

    char word[2];
    ssize_t got;
    do
        got = read(go, word, sizeof word);
    while (got < 0 && errno == EINTR);
    if (got <= 0)
        fail("the backend could not apply the memory cap", NULL);
    close(go);

    posix_spawnattr_t attr;
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGXFSZ);
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t child;
    int failed = posix_spawnp(&child, command[0], NULL, &attr, command, environ);
    if (failed)
        fail("can't start ", command[0], ": ", strerror(failed), NULL);
    say(report, "started\n");
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid == child) {
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
            char line[32];
            snprintf(line, sizeof line, "exit %d\n", code);
            say(report, line);
            _exit(code >= 0 ? code : 128 - code);
        }
        if (pid < 0)
            fail("lost its command", NULL);
    }
}
