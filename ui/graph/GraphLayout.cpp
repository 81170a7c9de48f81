#include "ui/graph/GraphLayout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <QElapsedTimer>
#include <QThreadPool>
#include <cstdio>

namespace lstudio::ui {
namespace {

// Graphviz's setters take char* but do not keep or modify the strings.
void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

GVC_t* context() {
  static GVC_t* gvc = [] {
    agseterr(AGMAX);  // warnings would go to stderr; failures are reported as data
    return gvContext();
  }();
  return gvc;
}

}  // namespace

QThreadPool* layoutPool() {
  static QThreadPool* pool = [] {
    auto* p = new QThreadPool;
    p->setMaxThreadCount(1);
    p->setExpiryTimeout(-1);
    return p;
  }();
  return pool;
}

LayoutResult runLayout(const LayoutRequest& req) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult r;
  GVC_t* gvc = context();
  if (!gvc) {
    r.error = "Graphviz could not be initialised";
    return r;
  }
  Agraph_t* g = agopen(const_cast<char*>("g"), Agdirected, nullptr);
  set(g, "rankdir", "TB");
  set(g, "nodesep", "0.22");
  set(g, "ranksep", "0.32");
  set(g, "splines", "spline");
  set(g, "mclimit", req.items.size() > 400 ? "0.3" : "1");
  set(g, "fontname", "Helvetica");
  // Defaults first so every node and edge shares one attribute record.
  agattr(g, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
  agattr(g, AGNODE, const_cast<char*>("fixedsize"), const_cast<char*>("true"));
  agattr(g, AGNODE, const_cast<char*>("label"), const_cast<char*>(""));
  agattr(g, AGNODE, const_cast<char*>("width"), const_cast<char*>("1"));
  agattr(g, AGNODE, const_cast<char*>("height"), const_cast<char*>("0.5"));
  agattr(g, AGEDGE, const_cast<char*>("arrowsize"), const_cast<char*>("0.6"));

  std::vector<Agraph_t*> clusters(req.clusters.size(), nullptr);
  for (size_t i = 0; i < req.clusters.size(); ++i) {
    const auto& c = req.clusters[i];
    Agraph_t* parent = c.parent >= 0 && static_cast<size_t>(c.parent) < i ? clusters[c.parent] : g;
    std::string name = "cluster_" + std::to_string(i);
    clusters[i] = agsubg(parent, const_cast<char*>(name.c_str()), 1);
    set(clusters[i], "label", c.label);
    set(clusters[i], "labeljust", "l");
    set(clusters[i], "fontsize", num(c.fontSize));
    set(clusters[i], "fontname", "Helvetica");
    set(clusters[i], "margin", "10");
  }
  std::vector<Agnode_t*> nodes(req.items.size(), nullptr);
  for (size_t i = 0; i < req.items.size(); ++i) {
    const auto& it = req.items[i];
    Agraph_t* owner = it.cluster >= 0 && static_cast<size_t>(it.cluster) < clusters.size() ? clusters[it.cluster] : g;
    std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(owner, const_cast<char*>(name.c_str()), 1);
    set(nodes[i], "width", num(it.width / 72.0));
    set(nodes[i], "height", num(it.height / 72.0));
  }
  std::vector<Agedge_t*> edges(req.edges.size(), nullptr);
  for (size_t i = 0; i < req.edges.size(); ++i) {
    const auto& e = req.edges[i];
    if (e.from < 0 || e.to < 0 || static_cast<size_t>(e.from) >= nodes.size() || static_cast<size_t>(e.to) >= nodes.size())
      continue;
    edges[i] = agedge(g, nodes[e.from], nodes[e.to], nullptr, 1);
    if (e.sameRank) set(edges[i], "minlen", "0");
  }

  if (gvLayout(gvc, g, "dot") != 0) {
    r.error = "Graphviz dot layout failed";
    agclose(g);
    return r;
  }
  const boxf bb = GD_bb(g);
  const double top = bb.UR.y;
  auto flipX = [&](double x) { return x - bb.LL.x; };
  auto flipY = [&](double y) { return top - y; };
  r.width = bb.UR.x - bb.LL.x;
  r.height = bb.UR.y - bb.LL.y;
  r.items.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    double w = ND_width(nodes[i]) * 72.0, h = ND_height(nodes[i]) * 72.0;
    r.items[i] = {flipX(ND_coord(nodes[i]).x) - w / 2, flipY(ND_coord(nodes[i]).y) - h / 2, w, h};
  }
  r.clusters.resize(clusters.size());
  for (size_t i = 0; i < clusters.size(); ++i) {
    boxf b = GD_bb(clusters[i]);
    r.clusters[i] = {flipX(b.LL.x), flipY(b.UR.y), b.UR.x - b.LL.x, b.UR.y - b.LL.y};
  }
  r.edgePoints.resize(edges.size());
  r.arrow.assign(edges.size(), 0);
  for (size_t i = 0; i < edges.size(); ++i) {
    if (!edges[i] || !ED_spl(edges[i]) || ED_spl(edges[i])->size < 1) continue;
    const bezier& bz = ED_spl(edges[i])->list[0];
    auto& pts = r.edgePoints[i];
    for (int k = 0; k < bz.size; ++k) {
      pts.push_back(flipX(bz.list[k].x));
      pts.push_back(flipY(bz.list[k].y));
    }
    if (bz.eflag) {
      pts.push_back(flipX(bz.ep.x));
      pts.push_back(flipY(bz.ep.y));
      r.arrow[i] = 1;
    }
  }
  gvFreeLayout(gvc, g);
  agclose(g);
  r.ok = true;
  r.milliseconds = timer.nsecsElapsed() / 1e6;
  return r;
}

}  // namespace lstudio::ui
