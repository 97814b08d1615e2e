#include "fedrt/protocol/upload_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace fedrt::protocol {

namespace {
Status IoError(const char* what) {
  return Status(StatusCode::kInternal, std::string("upload journal: ") + what + ": " + std::strerror(errno));
}
}  // namespace

UploadJournal::~UploadJournal() {
  if (fd_ >= 0) ::close(fd_);
}

Status UploadJournal::reset() {
  if (fd_ < 0) {
    std::FILE* f = std::tmpfile();  // unlinked at once: nothing is left behind
    if (f == nullptr) return IoError("cannot create a temporary file");
    fd_ = ::dup(fileno(f));
    std::fclose(f);
    if (fd_ < 0) return IoError("cannot keep the temporary file");
  }
  size_ = 0;  // the old bytes stay until overwritten; reads stop at size_
  return Status::Ok();
}

Status UploadJournal::append(const uint8_t* data, size_t n) {
  if (fd_ < 0) FEDRT_TRY(reset());
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(size_ + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError("write");
    done += static_cast<size_t>(w);
  }
  size_ += n;
  return Status::Ok();
}

Status UploadJournal::read(uint64_t offset, uint8_t* out, size_t n) const {
  if (offset + n > size_) return Status::OutOfRange("upload journal: read past the bytes taken");
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return IoError("read");
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace fedrt::protocol
