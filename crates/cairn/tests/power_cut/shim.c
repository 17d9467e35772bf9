/*
 * A power cut, simulated: an LD_PRELOAD shim that records what a process has made durable,
 * so that a test can rebuild the directory as a disk would hold it after losing power, with
 * everything that was written but never synced gone.
 *
 * The model is POSIX's, stricter than ext4's: a file's bytes are durable as of its last
 * successful fsync/fdatasync, and a directory's entries as of its last fsync. A file created
 * but never synced is empty after the cut; a name created or renamed in a directory that was
 * never synced afterwards is not there at all.
 *
 *   CAIRN_POWER_CUT_ROOT    the directory under watch (absolute, no trailing slash)
 *   CAIRN_POWER_CUT_SHADOW  where the durable state is recorded:
 *     root        the inode number of the root
 *     files/INO   a regular file's bytes as of its last sync
 *     dirs/INO    a directory's entries as of its last sync, one per line: "d|f INO NAME"
 *
 * When the process starts and the shadow holds no root yet, everything under the root is
 * recorded as durable (the test starts from a synced directory).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *root_dir;
static const char *shadow_dir;

/* Copy the bytes of `fd` into files/INO, through a temporary name so that a reader never
 * sees half a copy. */
static void record_file(int fd, ino_t ino) {
    char tmp[PATH_MAX], final_path[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/files/%lu.%ld.tmp", shadow_dir, (unsigned long)ino,
             (long)syscall(SYS_gettid));
    snprintf(final_path, sizeof final_path, "%s/files/%lu", shadow_dir, (unsigned long)ino);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) abort();
    static __thread char buffer[1 << 16];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(fd, buffer, sizeof buffer, at);
        if (n < 0) abort();
        if (n == 0) break;
        if (write(out, buffer, n) != n) abort();
        at += n;
    }
    close(out);
    if (rename(tmp, final_path) != 0) abort();
}

static void record_dir(const char *path, ino_t ino) {
    char tmp[PATH_MAX], final_path[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/dirs/%lu.%ld.tmp", shadow_dir, (unsigned long)ino,
             (long)syscall(SYS_gettid));
    snprintf(final_path, sizeof final_path, "%s/dirs/%lu", shadow_dir, (unsigned long)ino);
    FILE *out = fopen(tmp, "we");
    DIR *dir = opendir(path);
    if (!out || !dir) abort();
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
        char kind = entry->d_type == DT_DIR ? 'd' : entry->d_type == DT_REG ? 'f' : 0;
        if (kind) fprintf(out, "%c %lu %s\n", kind, (unsigned long)entry->d_ino, entry->d_name);
    }
    closedir(dir);
    fclose(out);
    if (rename(tmp, final_path) != 0) abort();
}

/* After a successful sync of `fd`: record what it made durable, if it is under the root. */
static void synced(int fd) {
    if (!root_dir || !shadow_dir) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    if (len < 0) return;
    path[len] = 0;
    size_t root_len = strlen(root_dir);
    if (strncmp(path, root_dir, root_len) != 0 || (path[root_len] && path[root_len] != '/'))
        return;
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    if (S_ISREG(st.st_mode)) {
        /* The descriptor may be open for writing only: read through a new one. */
        int readable = open(link, O_RDONLY | O_CLOEXEC);
        if (readable < 0) abort();
        record_file(readable, st.st_ino);
        close(readable);
    } else if (S_ISDIR(st.st_mode)) {
        record_dir(path, st.st_ino);
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    int result = real(fd);
    if (result == 0) synced(fd);
    return result;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    int result = real(fd);
    if (result == 0) synced(fd);
    return result;
}

/* Record a whole tree as durable: the state the process starts from. */
static void record_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISREG(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) abort();
        record_file(fd, st.st_ino);
        close(fd);
    } else if (S_ISDIR(st.st_mode)) {
        record_dir(path, st.st_ino);
        DIR *dir = opendir(path);
        if (!dir) abort();
        struct dirent *entry;
        while ((entry = readdir(dir))) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            char child[PATH_MAX];
            snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
            record_tree(child);
        }
        closedir(dir);
    }
}

__attribute__((constructor)) static void start(void) {
    root_dir = getenv("CAIRN_POWER_CUT_ROOT");
    shadow_dir = getenv("CAIRN_POWER_CUT_SHADOW");
    if (!root_dir || !shadow_dir) return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/root", shadow_dir);
    if (access(path, F_OK) == 0) return;
    snprintf(path, sizeof path, "%s/files", shadow_dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/dirs", shadow_dir);
    mkdir(path, 0700);
    record_tree(root_dir);
    struct stat st;
    if (stat(root_dir, &st) != 0) abort();
    snprintf(path, sizeof path, "%s/root", shadow_dir);
    FILE *out = fopen(path, "we");
    if (!out) abort();
    fprintf(out, "%lu\n", (unsigned long)st.st_ino);
    fclose(out);
}
