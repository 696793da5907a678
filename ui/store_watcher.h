#pragma once
// Tells when the open database may have been changed by someone else: the CLI in a terminal
// (`attnscope sweep`, `record`, `delete`) or another window commits through a connection of its
// own, which nothing in this process hears of. SQLite appends every commit to the -wal (a
// checkpoint, or a database not in WAL mode, writes the file itself), so the file system's change
// notices on those two files (inotify, through QFileSystemWatcher) say it without polling SQL.
// The folder is watched too, only to watch a -wal that appears later or a file that was replaced.
// Watching opens neither file: the locks SQLite holds on them are not disturbed. A notice that
// leaves a file's size, modification time and inode as they were is no commit and is ignored:
// SQLite running as root fchowns the -wal each time a connection opens it (our own listing's
// included), which notifies like a write.
//
// A commit is several writes and a sweep many commits: changed() comes kDelayMs after the first
// notice of a burst, once for the whole burst, so a stream of writes is heard about a few times a
// second, never once per write. Our own connections' commits are heard too; a listing after them
// finds nothing new.

#include <map>

#include <QObject>
#include <QString>

class QFileSystemWatcher;
class QTimer;

namespace attnscope::ui {

class StoreWatcher : public QObject {
  Q_OBJECT
 public:
  static constexpr int kDelayMs = 250;

  explicit StoreWatcher(QObject* parent = nullptr);
  // The database file to watch; empty: none. Notices about the previous one are dropped.
  void setDatabase(const QString& path);

 Q_SIGNALS:
  void changed();

 private:
  // Watches the database and its -wal where they exist and are not watched (yet, or again after
  // they were replaced); true when one was added.
  bool watchFiles();
  void fileChanged(const QString& file);
  void noticed();

  // What a commit changes about a file (dev and inode: replaced by another).
  struct Stamp {
    unsigned long long dev = 0, ino = 0;
    long long size = -1, mtime_s = 0, mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stampOf(const QString& file);

  QFileSystemWatcher* files_;
  QTimer* delay_;
  QString path_;
  std::map<QString, Stamp> stamps_;  // per watched file, as last noticed
};

}  // namespace attnscope::ui
