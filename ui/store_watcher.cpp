#include "ui/store_watcher.h"

#include <sys/stat.h>

#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>

namespace attnscope::ui {

StoreWatcher::StoreWatcher(QObject* parent) : QObject(parent) {
  files_ = new QFileSystemWatcher(this);
  delay_ = new QTimer(this);
  delay_->setSingleShot(true);
  delay_->setInterval(kDelayMs);
  connect(delay_, &QTimer::timeout, this, &StoreWatcher::changed);
  connect(files_, &QFileSystemWatcher::fileChanged, this, &StoreWatcher::fileChanged);
  // Anything else in the folder (the user's own files, a -journal) is no change of ours.
  connect(files_, &QFileSystemWatcher::directoryChanged, this, [this] {
    if (watchFiles()) noticed();
  });
}

void StoreWatcher::setDatabase(const QString& path) {
  if (!files_->files().isEmpty()) files_->removePaths(files_->files());
  if (!files_->directories().isEmpty()) files_->removePaths(files_->directories());
  delay_->stop();
  stamps_.clear();
  path_ = path;
  if (path_.isEmpty()) return;
  files_->addPath(QFileInfo(path_).absolutePath());
  watchFiles();
}

bool StoreWatcher::watchFiles() {
  if (path_.isEmpty()) return false;
  bool added = false;
  const QStringList watched = files_->files();
  for (const QString& f : {path_, path_ + "-wal"}) {
    if (watched.contains(f) || !QFileInfo::exists(f) || !files_->addPath(f)) continue;
    stamps_[f] = stampOf(f);
    added = true;
  }
  return added;
}

void StoreWatcher::fileChanged(const QString& file) {
  const bool replaced = watchFiles();  // a file deleted or replaced left the watch list
  const Stamp now = stampOf(file);
  Stamp& before = stamps_[file];
  if (!replaced && now == before) return;
  before = now;
  noticed();
}

StoreWatcher::Stamp StoreWatcher::stampOf(const QString& file) {
  struct stat st {};
  if (::stat(QFile::encodeName(file).constData(), &st) != 0) return {};
  return {static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino),
          static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
          static_cast<long long>(st.st_mtim.tv_nsec)};
}

void StoreWatcher::noticed() {
  if (!delay_->isActive()) delay_->start();
}

}  // namespace attnscope::ui
