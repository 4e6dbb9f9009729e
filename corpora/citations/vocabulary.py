"""Word lists the citation perturbations draw from: fake DOI prefixes, invented venues,
placeholder and plausible author names, real venues, title templates and near-miss word edits.

Everything is a constant tuple so a seeded `random.Random` over it is reproducible. Written for
this project (not taken from HALLMARK's generator). Invented venue names and DOI prefixes were
chosen to be implausible as existing ones; no registry lookup backs that, so a verifier that finds
one of them real has found an error in this list, not in the verifier.
"""

from __future__ import annotations

#: DOI registrant prefixes in the high 10.9xxxx range, not known to be assigned.
NONEXISTENT_DOI_PREFIXES: tuple[str, ...] = (
    "10.90417", "10.90823", "10.91156", "10.91734", "10.92068", "10.92491", "10.92937", "10.93312",
    "10.93870", "10.94205", "10.94659", "10.95013", "10.95588", "10.96124", "10.96477", "10.96902",
    "10.97351", "10.97846", "10.98263", "10.99710",
)

#: Publisher-like path stems for fabricated DOI suffixes.
DOI_PATH_STEMS: tuple[str, ...] = ("jmlr", "proc", "trans", "conf", "jour", "lett", "rev", "ai", "stat", "comp")

#: Conference acronyms used in conference-indexed fabricated DOI suffixes.
DOI_CONFERENCE_TAGS: tuple[str, ...] = ("NIPS", "ICML", "ICLR", "CVPR", "AAAI", "KDD", "ACL", "UAI")

#: Invented conferences (booktitle) and journals; none is a real venue as far as we know.
INVENTED_CONFERENCES: tuple[str, ...] = (
    "International Conference on Neural Abstraction and Reasoning Systems (ICNARS)",
    "Symposium on Adaptive Cognitive Computation (SACC)",
    "Pacific Workshop on Latent Structure Discovery",
    "International Conference on Scalable Representation Dynamics (ICSRD)",
    "European Symposium on Generative Signal Intelligence (ESGSI)",
    "Conference on Probabilistic Machine Perception (CoPMP)",
    "Annual Meeting on Autonomous Inference Engineering (AMAIE)",
    "International Forum on Deep Heuristic Optimization (IFDHO)",
)
INVENTED_JOURNALS: tuple[str, ...] = (
    "International Journal of Deep Inference Methods",
    "Transactions on Latent Structure Learning",
    "Journal of Quantum Statistical Cognition",
    "Annals of Computational Reasoning Systems",
    "Letters in Synthetic Molecular Informatics",
    "Review of Applied Stochastic Intelligence",
    "Journal of Theoretical Signal Cognition",
    "Archives of Generative Biological Computation",
)

#: Generic names of the kind a model writes when it has no real author to give.
PLACEHOLDER_AUTHORS: tuple[str, ...] = (
    "John Doe", "Jane Doe", "John Smith", "Jane Smith", "Alice Author", "Bob Coauthor",
    "A. Author", "B. Author", "First Author", "Second Author", "Firstname Lastname", "Anonymous Author",
)

#: Given and family names for fabricated author lists (plausible, deliberately varied).
GIVEN_NAMES: tuple[str, ...] = (
    "Wei", "Anna", "Rahul", "Sofia", "Kenji", "Laura", "Mehmet", "Chloe", "Arjun", "Elena", "Tomasz",
    "Yuki", "Daniel", "Amara", "Lucas", "Mei", "Jonas", "Priya", "Mateo", "Ingrid", "Hao", "Fatima",
)
FAMILY_NAMES: tuple[str, ...] = (
    "Zhang", "Kowalski", "Moreau", "Okafor", "Lindqvist", "Tanaka", "Brennan", "Castillo", "Nair",
    "Petrov", "Yilmaz", "Hoffmann", "Santos", "Kimura", "Adeyemi", "Novak", "Greco", "Fischer",
    "Ramirez", "Olsen", "Chen", "Bauer",
)

#: Real venues by kind and domain; the wrong-venue family of perturbations picks from these.
REAL_CONFERENCES: tuple[str, ...] = (
    "Advances in Neural Information Processing Systems",
    "International Conference on Machine Learning (ICML)",
    "International Conference on Learning Representations (ICLR)",
    "IEEE Conference on Computer Vision and Pattern Recognition (CVPR)",
    "AAAI Conference on Artificial Intelligence",
    "International Joint Conference on Artificial Intelligence (IJCAI)",
    "Conference on Uncertainty in Artificial Intelligence (UAI)",
    "International Conference on Artificial Intelligence and Statistics (AISTATS)",
    "European Conference on Computer Vision (ECCV)",
    "IEEE International Conference on Computer Vision (ICCV)",
    "Annual Meeting of the Association for Computational Linguistics (ACL)",
    "Conference on Empirical Methods in Natural Language Processing (EMNLP)",
)
REAL_JOURNALS: dict[str, tuple[str, ...]] = {
    "ml": (
        "Journal of Machine Learning Research", "Neural Computation", "Machine Learning",
        "IEEE Transactions on Pattern Analysis and Machine Intelligence", "Nature", "Science",
    ),
    "statistics": (
        "The Annals of Statistics", "Biometrika", "Journal of the American Statistical Association",
        "Journal of the Royal Statistical Society: Series B (Methodological)", "Technometrics",
    ),
    "cs": (
        "Communications of the ACM", "Journal of the ACM", "IEEE Transactions on Information Theory",
        "SIAM Journal on Computing", "The Computer Journal",
    ),
    "physics": ("Physical Review", "Physical Review Letters", "Annalen der Physik", "Reviews of Modern Physics"),
    "biology": (
        "Nature", "Science", "Cell", "Proceedings of the National Academy of Sciences",
        "Journal of Molecular Biology", "Journal of Biological Chemistry",
    ),
}

#: Title templates and fillers per domain for fabricated titles.
TITLE_TEMPLATES: tuple[str, ...] = (
    "{adj} {noun} for {task}",
    "{acronym}: {adj} {noun} for {task}",
    "Towards {adj} {task} with {noun}",
    "On the {prop} of {adj} {noun}",
    "{noun} Revisited: {adj} Methods for {task}",
)
TITLE_FILLERS: dict[str, dict[str, tuple[str, ...]]] = {
    "ml": {
        "adj": ("Sparse", "Contrastive", "Hierarchical", "Equivariant", "Self-Supervised", "Adaptive", "Implicit"),
        "noun": ("Attention Networks", "Graph Transformers", "Latent Variable Models", "Diffusion Priors", "Energy-Based Models"),
        "task": ("Few-Shot Classification", "Offline Reinforcement Learning", "Out-of-Distribution Detection",
                 "Long-Horizon Planning", "Continual Learning", "Time-Series Forecasting"),
        "prop": ("Generalization", "Sample Complexity", "Calibration", "Implicit Bias"),
    },
    "statistics": {
        "adj": ("Robust", "Semiparametric", "Penalized", "Bayesian", "Sequential", "Doubly Robust"),
        "noun": ("Likelihood Estimators", "Rank Statistics", "Shrinkage Priors", "Permutation Tests", "Mixture Models"),
        "task": ("High-Dimensional Regression", "Censored Survival Data", "Multiple Testing", "Clustered Observations",
                 "Change-Point Detection"),
        "prop": ("Consistency", "Asymptotic Efficiency", "Minimax Risk", "Coverage"),
    },
    "cs": {
        "adj": ("Lock-Free", "Incremental", "Probabilistic", "Cache-Oblivious", "Verifiable", "Byzantine-Tolerant"),
        "noun": ("Hash Tables", "Consensus Protocols", "Query Planners", "Type Systems", "Routing Schemes"),
        "task": ("Distributed Storage", "Stream Processing", "Program Synthesis", "Secure Multiparty Computation"),
        "prop": ("Complexity", "Correctness", "Scalability", "Fault Tolerance"),
    },
    "physics": {
        "adj": ("Nonlocal", "Topological", "Relativistic", "Anharmonic", "Dissipative", "Quasi-Periodic"),
        "noun": ("Spin Chains", "Electron Liquids", "Gauge Fields", "Optical Lattices", "Vortex States"),
        "task": ("Strongly Correlated Systems", "Thin Superconducting Films", "Cold Atomic Gases", "Disordered Media"),
        "prop": ("Stability", "Thermodynamics", "Coherence", "Critical Behavior"),
    },
    "biology": {
        "adj": ("Single-Cell", "Conditional", "Tissue-Specific", "High-Throughput", "Quantitative", "Allele-Specific"),
        "noun": ("Chromatin Remodelers", "Protein Kinases", "Regulatory RNAs", "Membrane Transporters", "Stem Cell Niches"),
        "task": ("Embryonic Development", "Bacterial Immunity", "Neuronal Differentiation", "Metabolic Adaptation"),
        "prop": ("Regulation", "Evolution", "Structure", "Dynamics"),
    },
}

#: Word substitutions for near-miss titles: each changes the title, not just its formatting.
NEAR_MISS_SYNONYMS: dict[str, str] = {
    "need": "require", "learning": "training", "networks": "nets", "nets": "networks",
    "recognition": "classification", "method": "approach", "model": "framework", "models": "frameworks",
    "selection": "choice", "analysis": "study", "representations": "embeddings", "estimation": "inference",
    "description": "account", "optimization": "minimization", "detection": "localization", "unified": "joint",
    "simple": "basic", "large": "big", "data": "information", "complete": "full", "fast": "rapid",
    "incomplete": "partial", "generative": "synthetic", "distributed": "parallel", "controlling": "bounding",
    "measurement": "quantification", "theory": "model", "structure": "architecture",
    "new": "novel", "rapid": "quick", "scalable": "efficient", "approximation": "estimation",
    "equations": "relations", "sequencing": "reading", "programmable": "tunable", "control": "command",
    "images": "pictures", "representation": "embedding", "computing": "calculating", "observations": "samples",
    "dimensionality": "dimension", "convolutions": "filters", "effects": "terms", "search": "retrieval",
    "image": "picture", "algorithm": "procedure", "statistical": "probabilistic", "semi-supervised": "weakly supervised",
}
#: Function-word swaps for near-miss titles.
NEAR_MISS_FUNCTION_WORDS: dict[str, str] = {
    "for": "towards", "via": "through", "with": "using", "by": "through", "from": "with", "through": "via",
    "towards": "for", "using": "with",
}
#: Words whose trailing "s" is not a plural marker.
SINGULAR_ENDING_IN_S: frozenset[str] = frozenset(
    {"analysis", "bayes", "gans", "process", "lasso", "physics", "class", "less", "loss", "versus", "gelus",
     "series", "basis", "thesis", "synthesis", "radius", "corpus", "status", "bus", "plus", "its", "this", "is",
     "towards", "across", "us", "has", "was", "statistics", "mathematics", "dynamics", "genetics", "various",
     "previous", "nucleus", "homogeneous", "inhomogeneous", "cross", "gas", "fibroblasts"}
)
